// {}
{
  json: std.parseJson('{"a": [1, 2.5, "x", null, true], "b": {"c": -0.0}}'),
  yaml: std.parseYaml('a: 1\nb: [x, y]\nc: {d: true}\n'),
  jsonNumbers: std.parseJson('[1e3, 0.1, 123456789012, -5]'),
}
