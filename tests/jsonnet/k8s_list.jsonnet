// {"libs": ["lib"]}
local k = import 'k.libsonnet';
{
  apiVersion: 'v1',
  kind: 'List',
  items: [k.configMap('cm-%d' % i, { index: std.toString(i) }) for i in std.range(1, 3)],
}
