// {}
[std.base64('hello, world'), std.base64('é ÿ')]
