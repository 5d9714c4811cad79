// {}
// Unquoted keys: which need quotes differs (go-jsonnet leaves `e` bare, jrsonnet quotes it).
std.manifestYamlDoc({ a: 1, e: {}, n: 2, y: 3, 'on': 4, plain: 5 }, quote_keys=false)
