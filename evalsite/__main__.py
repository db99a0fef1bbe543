from evalsite.console import main

main()
