// dptrain: the command line (app/command_line.cpp), as users get it.
#include "command_line.hpp"

int main(int argc, char** argv) { return dptrain::app::run_command_line(argc, argv, {}); }
