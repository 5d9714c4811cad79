// {}
// go-jsonnet refuses a string with a code point above 255; jrsonnet encodes its UTF-8.
std.base64('hello, world ✓')
