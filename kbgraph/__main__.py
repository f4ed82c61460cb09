from kbgraph.cli import main

main()
