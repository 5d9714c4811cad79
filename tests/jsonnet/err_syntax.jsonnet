// {"fails": true}
{ a: , }
