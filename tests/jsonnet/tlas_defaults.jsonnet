// {"tlas": [{"name": "b", "value": "given"}]}
function(a='default-a', b='default-b') [a, b]
