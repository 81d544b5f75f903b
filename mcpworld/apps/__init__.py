"""The desktop applications: their catalog (conf/app/*.yaml) and how each desktop starts them."""
