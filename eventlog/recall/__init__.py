"""Reading the log: time scope, planner, views, query and output, grep and text matching, follow, export, compaction."""
