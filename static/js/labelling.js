// The labelling page: the keys overlay and the stored-label toast (issue 30, item 3).
