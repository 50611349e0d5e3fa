echo "a script without #! cannot be executed directly"
