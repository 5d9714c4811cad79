// {}
// A string with newlines: jrsonnet writes a block scalar (|-), go-jsonnet a quoted string.
std.manifestYamlDoc({ s: 'multi\nline', t: 'trailing\n' })
