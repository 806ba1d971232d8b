from django.http import HttpResponse
from django.urls import path

urlpatterns = [path("elsewhere/<int:pk>/img", lambda request, pk: HttpResponse(), name="image-file")]
