build/obj/runner/core/strv.o: runner/core/strv.c runner/core/strv.h
runner/core/strv.h:
