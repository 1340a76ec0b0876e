"""memmatrix.result"""
