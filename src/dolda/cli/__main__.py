from ._group import main

main()
