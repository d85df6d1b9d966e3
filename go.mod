module github.com/lsmgo-dev/lsmgo

go 1.25.0

require github.com/klauspost/compress v1.20.4
