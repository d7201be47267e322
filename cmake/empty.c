typedef int bfh_empty_module; /* placeholder for a module without sources */
