module gorender

go 1.22
