int classify(int i);

int main(void) {
    int s = 0;
    for (int i = 0; i < 30; i++)
        s += classify(i); // expect: 30
    return s == 0;
}
