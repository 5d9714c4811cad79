// {"fails": true, "tlas": [{"name": "nope", "value": "1"}]}
function(name='x') { name: name }
