#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) { return cutelab::run_cli(argc, argv, std::cout, std::cerr); }
