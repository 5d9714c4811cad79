// {}
{
  b64bytes: std.base64([0, 1, 254, 255]),
  decoded: std.base64Decode('aGVsbG8='),
  decodedBytes: std.base64DecodeBytes('AAH+/w=='),
  md5: std.md5('plumb'),
  md5empty: std.md5(''),
  sha256: std.sha256('plumb'),
  escapeJson: std.escapeStringJson('quote " backslash \\ tab \t nl \n ctl \u0001 é'),
  escapeBash: std.escapeStringBash("it's"),
  escapeDollars: std.escapeStringDollars('$x'),
  escapePython: std.escapeStringPython('a"b'),
  encodeUTF8: std.encodeUTF8('é✓'),
  decodeUTF8: std.decodeUTF8([104, 105, 195, 169]),
}
