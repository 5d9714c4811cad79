#!/bin/sh
# trailing spaces and a tab below are preserved  
	curl -fsS http://localhost:8080/ || exit 1
