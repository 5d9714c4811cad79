// {"tlas": [{"name": "ignored", "value": "x"}]}
{ note: 'TLAs given to a program that is not a function are ignored' }
