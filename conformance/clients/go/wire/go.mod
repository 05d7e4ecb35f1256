module kop/conformance/wire

go 1.26.0
