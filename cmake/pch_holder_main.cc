// The one source of the precompiled-header holder executables (cmake/build_speed.cmake):
// the headers arrive through the precompiled header itself.
int main() { return 0; }
