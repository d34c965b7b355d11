def greet():
    return "Hello, world"


if __name__ == "__main__":
    print(greet())
