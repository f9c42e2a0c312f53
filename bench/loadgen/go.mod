module caldera/bench/loadgen

go 1.25.0
