// {}
// A number made a string: go-jsonnet writes 17 significant digits ("0.10000000000000001"),
// jrsonnet the shortest that reads back the same ("0.1").
[std.toString(0.1), '' + 0.3, '%s' % 2.675, std.toString(1 / 3)]
