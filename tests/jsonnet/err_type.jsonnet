// {"fails": true}
{ v: 1 + {} }
