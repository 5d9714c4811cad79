// Shadows lib/k.libsonnet when `vendor` comes after `lib` in the search path.
{ configMap(name, data={}):: { kind: 'ConfigMap', from: 'vendor', metadata: { name: name } } }
