#include <cstdio>
int main() { std::puts("subnetd: not built yet"); return 1; }
