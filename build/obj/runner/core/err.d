build/obj/runner/core/err.o: runner/core/err.c runner/core/err.h
runner/core/err.h:
