// {"libs": ["lib"]}
local k = import 'k.libsonnet';
local h = import 'sub/helper.libsonnet';
{
  cm: k.configMap('demo', { greeting: h.greeting }),
  labels: k.labels('web'),
  sibling: h.sibling,
  raw: importstr 'data/greeting.txt',
  bin: importbin 'data/bytes.bin',
  sourceDir: (import 'imports_target.libsonnet').who,
}
