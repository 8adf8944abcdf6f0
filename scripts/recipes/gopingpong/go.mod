module udsprobe/recipes/gopingpong

go 1.21
