from gshare.cli import main

main()
