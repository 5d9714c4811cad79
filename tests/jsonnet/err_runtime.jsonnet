// {"fails": true}
local check(x) = if x > 1 then error 'x is too big: ' + x else x;
{ v: check(2) }
