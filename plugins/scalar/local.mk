# plugins/scalar: the portable C backend that always exists.
