// {"libs": ["lib", "vendor"]}
// Both libraries hold k.libsonnet: the one listed last is searched first.
(import 'k.libsonnet').configMap('x')
