// The answers browser: expand an answer in place (issue 30, item 5).
