// {}
// The largest double: jrsonnet writes its 17 significant digits followed by zeros, which
// serde_json (plumb's JSON reader) refuses as out of range; go-jsonnet writes it exactly.
[1.7976931348623157e308]
