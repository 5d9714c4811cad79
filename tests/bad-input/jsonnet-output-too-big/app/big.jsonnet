// 65 MiB of JSON: over plumb_core::limits::MAX_JSONNET_OUTPUT_BYTES.
local mib = std.join('', std.repeat(['0123456789abcdef'], 65536));
{ kind: 'ConfigMap', metadata: { name: 'big' }, data: { ['k%d' % i]: mib for i in std.range(1, 65) } }
