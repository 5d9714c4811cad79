// {}
"tab\tnewline\nbackslash\\ unicode\u00e9 \u2713 quote\" single'"
