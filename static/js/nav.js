// The collapsing top navigation on small screens (issue 30, item 1).
