// The one source of the precompiled-header holder libraries (cmake/build_speed.cmake):
// the headers arrive through the precompiled header itself.
