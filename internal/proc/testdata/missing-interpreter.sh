#!/nonexistent/interpreter -x
echo never runs
