int count_multiples(int n, int k);
int plain_twice(int x);
