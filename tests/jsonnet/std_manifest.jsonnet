// {}
local v = { b: [1, 2, { c: null }], a: 'x', t: true, n: 1.5, e: {}, l: [] };
{
  jsonEx: std.manifestJsonEx(v, '  '),
  jsonMin: std.manifestJsonMinified(v),
  json: std.manifestJson(v),
  yamlDoc: std.manifestYamlDoc(v),
  yamlStream: std.manifestYamlStream([v, { k: 'v' }]),
  ini: std.manifestIni({ main: { a: 1 }, sections: { s1: { b: 'x' } } }),
  python: std.manifestPythonVars({ a: true, b: [1, 'x'] }),
  toString: std.toString(v),
}
