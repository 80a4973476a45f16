/* sizeclass.c - the bin tables. */
#include "small/sizeclass.h"

#include "small/sizeclass_tables.h"
