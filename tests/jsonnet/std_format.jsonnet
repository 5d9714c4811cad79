// {}
{
  percent: '%s-%d-%05.2f-%x-%o-%e' % ['a', 42, 3.14159, 255, 8, 12345.678],
  named: '%(name)s is %(age)d' % { name: 'ann', age: 7 },
  format: std.format('%-6s|%6s|%+d', ['l', 'r', 5]),
  padded: '%08.3f' % 2.5,
  char: '%c%c' % [65, 'b'],
  pct: '100%%',
}
