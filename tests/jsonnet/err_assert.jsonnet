// {"fails": true}
{ a: 1, assert self.a == 2 : 'a must be 2' }
