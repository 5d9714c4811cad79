// {"fails": true}
[1, 2][5]
