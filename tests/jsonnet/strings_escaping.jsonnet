// {}
{
  single: 'it\'s "quoted"',
  verbatim: @'c:\path\no-escape''s',
  block: |||
    line one
      indented
    last
  |||,
  control: '\u0000\u0001\u001f\u007f',
  emoji: '😀',
  surrogates: '\ud83d\ude00',
  keys: { 'with space': 1, 'dot.key': 2, '': 3, 'é': 4 },
  concat: 'a' + 1 + true + null,
}
