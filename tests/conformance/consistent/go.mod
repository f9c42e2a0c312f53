module caldera/conformance/consistent

go 1.22

require stathat.com/c/consistent v1.0.0
